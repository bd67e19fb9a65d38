"""Panel context builders: one function per panel of the session page, used by both the
full page (views/pages.session_detail) and the panel's own htmx endpoint, so a panel
gets its data one way.

They read (models, selectors, the read functions of services, rendering) and never
write. Only views and consumers import them; templates and template tags receive what
they return and only format it.
"""

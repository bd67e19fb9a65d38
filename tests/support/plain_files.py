"""A file source for the core's context-file and skill loaders that may read the whole
disk: the tests of the core's own behaviour (pi's fixtures in temporary folders) read
through it. It is the server's reader (`safefs.BeneathFiles`) with `/` as its one root,
so those tests run the same code the server does."""

from sessions_app.agent.safefs import BeneathFiles

PLAIN_FILES = BeneathFiles(["/"])

"""Documents rendered from templates outside the session page's panels (the HTML export,
the share page's branch view, the rendered comparison): views and commands call them;
services never render."""

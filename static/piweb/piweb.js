// piweb's small client: no build step. Page-specific behaviour lives in its own file.

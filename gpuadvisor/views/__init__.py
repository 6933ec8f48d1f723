"""Views shared by the window and the command line: they draw core results and never decide."""

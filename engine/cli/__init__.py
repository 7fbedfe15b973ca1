"""The command line: the click application and one module per command."""

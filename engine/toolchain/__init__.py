"""The compilers (identity, probe) and the linker programs their drivers run."""

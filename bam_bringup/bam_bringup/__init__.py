"""Launch files, bench configurations and the in-process runner."""

"""What the user sees: status lines, progress, JSON events, compiler diagnostics, timings."""

"""One build, composed: load, resolve, evaluate, plan, execute, report."""

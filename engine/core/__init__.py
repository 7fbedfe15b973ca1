"""Values and rules every layer of the engine uses: errors, conventions, containment, the
action environment, the registry of environment variables. Imports nothing of the engine."""

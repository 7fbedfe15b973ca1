"""What a result may be trusted for: cache namespaces, uploads, accepting cached results."""

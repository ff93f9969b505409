"""What one run reads and builds: its scope, context, policy, state, history and prompts."""

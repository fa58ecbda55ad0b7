"""One module per ``nlsim`` subcommand; each has ``register(subparsers)``."""

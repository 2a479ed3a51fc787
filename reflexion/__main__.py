"""``python -m reflexion`` runs the CLI."""

from reflexion.cli.app import main

main()

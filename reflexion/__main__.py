"""``python -m reflexion`` runs the CLI."""

from reflexion.cli import main

main()

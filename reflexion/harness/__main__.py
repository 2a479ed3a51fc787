"""``python -m reflexion.harness`` runs the ``reflexion`` command line."""

from reflexion.harness import main

main()

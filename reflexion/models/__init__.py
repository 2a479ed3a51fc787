"""The chat models the graphs answer with: provider strings and the embedded model
(``providers``), its chat wrapper (``chat``), the HTTP transport and hosted providers' retries
(``transport``, ``retries``), and the aligned prompt cache of the embedded model (``cache``)."""

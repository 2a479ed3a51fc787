"""The ALFWorld nodes (the paper's §4.1), one module per role: the actor subgraph that plays a
game, the two self-evaluators, and what the reflector reads of a failed trial."""

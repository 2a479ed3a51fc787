"""Node functions of the Reflexion graphs. The nodes every family shares sit here (the evaluator
contract, the self-reflector, the memory an actor carries, each role's model); each family's
own nodes are one folder: ``qa/``, ``programming/``, ``alfworld/``."""

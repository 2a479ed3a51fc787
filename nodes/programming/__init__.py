"""The programming nodes (the paper's §4.3), one module per role: the test writer, the code
actor, the unit-test evaluator with the evidence it weighs, what retries and the reflector
read of its feedback, and the reflector's prompt.

The benchmark's hidden tests are not part of the graph state: nothing here can show them.
"""

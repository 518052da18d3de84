"""A third benchmark that lives only in the tests: proof that the shared layers read a benchmark's
declaration and never name AgentSocialBench's categories, levels, metrics or roles.

"Toy secret-keeping": a teller writes notes to a friend while keeping one secret. Its own axes
(topic × tone), roles (teller, grader), metrics (SLR, lower is better; CHEER, higher is better), one
table and one figure of its own. Registered through $LOCALBENCH_BENCHMARKS, as a plug-in outside
the package would be: ``toy=toy_benchmark.plugin:ToySecrets`` with tests/ on the Python path.
"""

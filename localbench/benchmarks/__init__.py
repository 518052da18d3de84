"""The benchmarks: one folder each, a ``Benchmark`` subclass registered as an entry point.

The contract is ``contract.Benchmark``; which benchmarks exist is ``localbench.registry``'s answer.
"""

from localbench.benchmarks.contract import Benchmark, CategoryCheck, DataCheck

__all__ = ["Benchmark", "CategoryCheck", "DataCheck"]

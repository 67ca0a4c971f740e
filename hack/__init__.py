"""The workshop beside the product, one room per job (hack/README.md): the API-server stand-in,
the running stack, the demo, the conformance runners and the benchmarks."""

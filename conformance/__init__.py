"""hwcheck: the conformance checker that certifies a vendor port (suites, isolated runner,
reporters). `hwcheck` and `python -m hwport.conformance` are its command line."""

"""Test kit shipped with flare: a scripted LM (also loadable from a JSON file as
``--model scripted:FILE``), an in-memory retriever, and the contract suites every backend, these
fakes included, must pass."""

"""The composition root: ``cronwheel serve`` builds the store, the engine, the API and the local
workers, binds the listeners and runs them until a signal says stop. Nothing imports this package
but the CLI; it is the one place that knows every layer."""

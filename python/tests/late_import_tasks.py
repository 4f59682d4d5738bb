"""A module a task imports while it runs (template_tasks.import_late): the worker template
learns it from the answer and imports it for the workers forked after."""

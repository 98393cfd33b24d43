"""What a model does: the audit's tasks (``--task``), kept free of torch."""

#: "auto" reads it from the model (faux.audit.loaders.target.TargetModel.task)
TASKS = ("auto", "classification", "regression")

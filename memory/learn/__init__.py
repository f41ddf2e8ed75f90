"""Small learned models of the write path, trained by a command from labelled data in the repo.

- the gate (``gate.py``): is a user's sentence worth keeping, and as what (fact, preference, event,
  task-only, nothing)? A linear model over the sentence's embeddings and the rule signals
  (``signals.py``), trained by ``python -m memory.learn train gate`` (``gate_train.py``);
- the judge (``judge*.py``): what replaces what (issue 39, item 2). The write path takes only its
  verdict that a statement restates another in other words (memory/services/subject_tier.py, D25);
  replaces stay the subject rules' until a learned judge beats them on its report half.

Models are plain NumPy arrays in ``models/*.npz`` (no pickle): inference needs NumPy only, training
needs scikit-learn. Training reads ``evaluation/learn/*-tune.jsonl``; the ``*-report.jsonl`` halves,
written by someone who saw neither the code nor the tune half, are only ever reported on.
"""

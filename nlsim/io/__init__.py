"""Input and output: reading tables, corpora and pair files; writing files and folders atomically; what
nlsim may overwrite; the model store.

- :mod:`~nlsim.io.tables`: the one table reader (explicit quoting, every row's field count checked);
- :mod:`~nlsim.io.corpus`: a news corpus in one validated schema;
- :mod:`~nlsim.io.corpus_schema`: that schema's fields, its one-line description and the column names that
  look like a field;
- :mod:`~nlsim.io.pairs`: annotated pair files;
- :mod:`~nlsim.io.atomic`: atomic files and folders, with the umask's permissions;
- :mod:`~nlsim.io.ownership`: markers of the folders nlsim wrote, and output-versus-input path checks;
- :mod:`~nlsim.io.model_store`: versioned model folders and the current-model pointer;
- :mod:`~nlsim.io.records`: typed records read back from JSON another version of nlsim wrote.
"""

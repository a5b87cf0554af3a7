"""The fs, official and ide profiles' forms of the operations: arguments, defaults, result shapes and the wording of errors."""

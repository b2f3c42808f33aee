from django.core.validators import RegexValidator

# Oracle identifiers: a letter, then letters, digits, _ $ #; 128 characters at most.
name_validator = RegexValidator(
    r"^[A-Za-z][A-Za-z0-9_$#]{0,127}$",
    "Use a letter followed by letters, digits, _, $ or # (at most 128 characters).",
)

"""What the cloud stores' errors mean, by their names: S3's error codes (``STORE_CODES``, read
by ``error_code``, the one parser of a store's error response), and the credential and
connection errors of botocore, aiohttp, google-auth and azure-core (``storage_problem``).
Matched by name, so that no store's library is imported for servers without that store;
``vfs_mcp.errors`` maps them to its error codes."""

from __future__ import annotations

STORE_CODES: dict[str, tuple[str, str]] = {
    "NoSuchKey": ("NOT_FOUND", "does not exist; list its folder to check the name"),
    "NoSuchBucket": ("NOT_FOUND", "does not exist (no such bucket)"),
    "404": ("NOT_FOUND", "does not exist; list its folder to check the name"),
    "AccessDenied": ("ACCESS_DENIED", "access denied by the storage backend"),
    "403": ("ACCESS_DENIED", "access denied by the storage backend"),
    "InvalidRange": ("INVALID_ARGUMENT", "was asked for a byte range outside the object"),
    "PreconditionFailed": ("CONFLICT", "changed since it was read (precondition failed)"),
}
"""Error code -> (the error code of ours, ``vfs_mcp.errors``; what it means, after the path)."""


def error_code(exc: BaseException, *, status: bool = False) -> str | None:
    """The error code a store answered with (botocore's ``ClientError``, possibly wrapped by
    s3fs); with ``status``, its HTTP status where it gave no code. None for other errors."""
    for candidate in (exc, exc.__cause__, exc.__context__):
        response = getattr(candidate, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            if not code and status:
                code = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return str(code) if code is not None else None
    return None


STORAGE_PROBLEMS = {
    # botocore's names (matched by name: no botocore import for servers without S3)
    "NoCredentialsError": "no credentials for the store; set them (AWS_PROFILE, AWS_ACCESS_KEY_ID, ...) and restart",
    "PartialCredentialsError": "incomplete credentials for the store; give both key and secret",
    "CredentialRetrievalError": "the store's credentials could not be fetched; check the credential source",
    "EndpointConnectionError": "the store's endpoint cannot be reached; check endpoint_url and the network",
    "ConnectTimeoutError": "the store's endpoint did not answer; check endpoint_url and the network",
    "ClientConnectorError": "the store's endpoint cannot be reached; check endpoint_url and the network",
    "ServerTimeoutError": "the store did not answer in time; try again",
    "DefaultCredentialsError": "no Google credentials; set GOOGLE_APPLICATION_CREDENTIALS or run gcloud auth",
    "ClientAuthenticationError": "the store refused the credentials; check the account key or token",
}


def storage_problem(exc: BaseException) -> str | None:
    """What is wrong with a store's credentials or connection, in words with a next step
    (None when ``exc`` and its causes are something else)."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return None
        for klass in type(seen).__mro__:
            if klass.__name__ in STORAGE_PROBLEMS:
                return STORAGE_PROBLEMS[klass.__name__]
        seen = seen.__cause__ or seen.__context__
    return None

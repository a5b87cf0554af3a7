"""The command line: the server's options, the subcommands, the command-line client, the XML
runner, the tool reference and replay."""

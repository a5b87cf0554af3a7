"""How clients reach a server: stdio and streamable HTTP (its session limits and resumable streams)."""

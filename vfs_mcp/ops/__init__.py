"""Operations: plain functions over a JailedFS returning pydantic models. No MCP here."""

"""Editor buffers: files held open by URI across calls, with handles kept in the state store (the ide profile's)."""

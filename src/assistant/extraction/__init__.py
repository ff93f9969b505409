"""What memory learns from a message: the gate, the extraction call, held messages."""

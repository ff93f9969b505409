"""The model side: the one seam that builds the chat model, provider quirks, the embedder."""

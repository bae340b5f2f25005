"""Attention Scaling Lab: why attention divides Q K^T by sqrt(d_k).

``app.simulation`` and ``app.theory`` are numpy only; the plots and the page
build on them.
"""

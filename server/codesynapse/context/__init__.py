"""Budgeted context answers: symbol cards, call graphs, minimal and PR context, search."""

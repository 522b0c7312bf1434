"""The pygls server: one module per concern; handlers stay thin."""

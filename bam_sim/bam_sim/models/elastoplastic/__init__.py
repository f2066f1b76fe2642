"""Chattering-free elasto-plastic stiction (Kikuuwe; Cisneros et al.) and its numerics."""

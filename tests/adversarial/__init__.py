"""Adversarial suite: hostile model output and hostile content against the real loop and panel.

See SECURITY.md for the threat model; each test module is one family of attacks.
"""

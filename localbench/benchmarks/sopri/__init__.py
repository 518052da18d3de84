"""SopriBench: how much an attacker model infers about one user from that user's public posts.

Everything here runs inside a synthetic, offline sandbox (docs/ethics.md): the posts are the
benchmark's synthetic ones and every tool reads only the sandbox.
"""

"""Decisions: every verdict, exit code, choice, recommendation and "non-inferior" is made here, from typed
evidence, applying each rule once (tests/test_architecture.py checks that no other module makes one)."""

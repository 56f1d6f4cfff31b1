"""Is this config valid?"""

"""gateway/backend"""

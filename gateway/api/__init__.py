"""gateway/api"""

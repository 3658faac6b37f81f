"""gateway/ops"""

"""parsers/core"""

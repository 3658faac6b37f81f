"""parsers/stages"""

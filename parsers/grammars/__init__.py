"""parsers/grammars"""

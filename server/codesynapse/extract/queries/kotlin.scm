; Kotlin: classes (interface/enum decided by the hooks), objects, functions, top-level
; constants, calls, supertypes (a constructor call marks the class), imports.
(class_declaration (type_identifier) @name) @definition.class
(object_declaration (type_identifier) @name) @definition.class
(function_declaration (simple_identifier) @name) @definition.function
(source_file (property_declaration (variable_declaration (simple_identifier) @name)) @definition.constant)

(call_expression . (_) @callee) @reference.call

(delegation_specifier (constructor_invocation) @inherit)
(delegation_specifier (user_type) @implements)
(delegation_specifier (explicit_delegation (user_type) @implements))

(import_header) @import

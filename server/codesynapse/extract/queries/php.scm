; PHP: types, functions, methods, namespace constants, calls, `new`, bases, traits, `use`.
(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(function_definition name: (name) @name) @definition.function
(method_declaration name: (name) @name) @definition.method
(program (const_declaration (const_element (name) @name) @definition.constant))

(function_call_expression function: (_)) @reference.call @callee
(member_call_expression) @reference.call @callee
(nullsafe_member_call_expression) @reference.call @callee
(scoped_call_expression) @reference.call @callee
(object_creation_expression [(name) (qualified_name)]) @reference.new @callee

(base_clause [(name) (qualified_name)] @inherit)
(class_interface_clause [(name) (qualified_name)] @implements)
(declaration_list (use_declaration [(name) (qualified_name)] @inherit))

(namespace_use_declaration) @import

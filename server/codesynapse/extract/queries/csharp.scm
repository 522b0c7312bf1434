; C#: types, methods, constructors, calls, `new`, bases (IName → implements), using directives.
(class_declaration name: (identifier) @name) @definition.class
(struct_declaration name: (identifier) @name) @definition.struct
(record_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method

(invocation_expression function: (_) @callee) @reference.call
(object_creation_expression type: (_) @callee) @reference.new

(base_list [(identifier) (generic_name) (qualified_name)] @implements (#match? @implements "^([A-Za-z_][A-Za-z0-9_]*[.])*I[A-Z]"))
(base_list [(identifier) (generic_name) (qualified_name)] @inherit (#not-match? @inherit "^([A-Za-z_][A-Za-z0-9_]*[.])*I[A-Z]"))

(using_directive) @import

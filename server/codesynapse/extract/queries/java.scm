; Java: types, methods and constructors, calls and instantiations, bases, imports.
(class_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(record_declaration name: (identifier) @name) @definition.class
(annotation_type_declaration name: (identifier) @name) @definition.interface
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method

(method_invocation name: (identifier)) @reference.call @callee
(object_creation_expression type: (_)) @reference.new @callee

(class_declaration superclass: (superclass (_) @inherit))
(class_declaration interfaces: (super_interfaces (type_list (_) @implements)))
(enum_declaration interfaces: (super_interfaces (type_list (_) @implements)))
(record_declaration interfaces: (super_interfaces (type_list (_) @implements)))
(interface_declaration (extends_interfaces (type_list (_) @inherit)))

(import_declaration) @import

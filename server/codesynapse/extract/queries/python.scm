; Python: definitions, calls, bases, imports.
(function_definition name: (identifier) @name) @definition.function
(class_definition name: (identifier) @name) @definition.class
(module (assignment left: (identifier) @name) @definition.constant)

(call function: (_) @callee) @reference.call

(class_definition superclasses: (argument_list [(identifier) (attribute)] @inherit))

(import_statement) @import
(import_from_statement) @import

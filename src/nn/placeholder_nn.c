/* placeholder: replaced as the room is written */
